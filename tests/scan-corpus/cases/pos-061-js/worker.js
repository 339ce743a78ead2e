// inventory — integration setup
"use strict";

const express = require("express");

const redis = new Redis("redis://:5jIYTffmLTJPTQWJajk@cache.prod.internal:6379/0");

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
