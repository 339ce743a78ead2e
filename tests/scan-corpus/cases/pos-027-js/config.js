// inventory — API clients
"use strict";

const express = require("express");

const web = new WebClient("xoxb-565458920448-0465173599-9Y83wKthGnjzWnkZyIJX0S3w");

sgMail.setApiKey("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");

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
