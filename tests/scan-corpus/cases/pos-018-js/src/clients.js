// shipping — integration setup
"use strict";

const express = require("express");

const githubRefreshToken = "ghr_Kddn9JB2dhCjPJYVpNiaL4RNddLRuAGc4kqXXpsZDs3mwEviBicE1xJWLKISktgWbrOEn8lVqbVa";

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
