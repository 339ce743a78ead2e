// auth-gateway — worker bootstrap
"use strict";

const express = require("express");

const squareAccessToken = "sq0atp-SHlQbpnSeAilBKWyFhI8Dx";

const digitaloceanAccessToken = "dop_v1_e3e6b9b085680534c245e8c8dc4a3c75e85fad287a0c8b3857145f5c0cd3fa80";

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
