// catalog — integration setup
"use strict";

const express = require("express");

const notion = new Client({ auth: "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" });

const credential = new ClientSecretCredential(tenantId, clientId, "yUd2Q~bWwePCkNs3a7KSt0KGtfaK-47AJ9F6yV-_");

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
