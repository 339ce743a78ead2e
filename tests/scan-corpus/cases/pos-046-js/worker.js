// notifier — integration setup
"use strict";

const express = require("express");

const octokit = new Octokit({ auth: "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" });

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
