// inventory — worker bootstrap
"use strict";

const express = require("express");

const res = await fetch(url, { headers: { Authorization: "Basic cm9ib3QkZ2xvYmV4K2NpOk91ejNEcGY2d2pFMkdZWUtFelM=" } });

const openai = new OpenAI({ apiKey: "sk-proj-KUzuQ3oGI5tk262vWbHyVjqGFbt97YbvjuoauHy_xB2lWPldXFBqt6C_lvbZqpKwDVhuhiaCVUXdZYBEPaHgWDqyWhWSQF4QCrqJpzjXAbS" });

script.src = "https://maps.googleapis.com/maps/api/js?key=AIzaAaNyWXsJQO6o6HSB6rKJlBXK9QcWG2y2NS0&callback=initMap";

const app = express();
app.get("/healthz", (req, res) => res.json({ status: "ok" }));
app.listen(process.env.PORT || 8080);
