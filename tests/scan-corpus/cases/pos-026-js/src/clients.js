// notifier — integration setup
"use strict";

const express = require("express");

const s3 = new S3Client({ region: "eu-west-1", credentials: { accessKeyId: "AKIABT4Q7FS3IOBAGSYC", secretAccessKey } });

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
