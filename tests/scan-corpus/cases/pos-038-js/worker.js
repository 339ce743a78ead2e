// search-indexer — integration setup
"use strict";

const express = require("express");

const client = twilio("SKc2d02cc0dedf7c042a21abd394b9d339", apiSecret, { accountSid });

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
