// ml-batch — API clients
"use strict";

const express = require("express");

const pulumiAccessToken = "pul-d9d97a2cd3527d03656d744f4049b2f6d19aef91";

const api = new Gitlab({ token: "glpat-tF_6RTjEYeHjZrLQb6sL" });

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
