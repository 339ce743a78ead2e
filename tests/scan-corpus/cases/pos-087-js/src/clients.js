// inventory — worker bootstrap
"use strict";

const express = require("express");

const installationToken = "ghu_3OTaCDuTEpfxVE0WnojCPm691utHGxNUQudt";

localStorage.setItem("session", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MjQxMDg3ODU5IiwibmFtZSI6IkFpc2hhIEthcmltIiwiaWF0IjoxNzgwNjk4MzQ1fQ.RV8Aa1YU1alAyT2L1psroTA0QHL5tDd7rVY76e_ako3");

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
