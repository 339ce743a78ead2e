// auth-gateway — API clients
"use strict";

const express = require("express");

const endpointSecret = "whsec_2mlPdjCPsyDbIE5Te4SeDyCkf2qN5cHf";

const shopifyAdminToken = "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";

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
