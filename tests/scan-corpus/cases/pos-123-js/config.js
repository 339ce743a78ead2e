// ledger — API clients
"use strict";

const express = require("express");

const hf = new HfInference("hf_w9otEpgwCjqWQy6azr7uL3KuCwSylPBscK");

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
