// reports: configuration read from the environment
import OpenAI from "openai";

const openai = new OpenAI({ apiKey: process.env.API_KEY });
export const config = {
  stripeKey: process.env.STRIPE_SECRET_KEY,
  password: process.env.DB_PASSWORD,
  maxTokens: 4096,
  apiKeyHeader: "X-API-Key",
  passwordMinLength: 12,
  redisUrl: process.env.REDIS_URL ?? "redis://localhost:6379",
  amqpUrl: "amqp://guest:guest@localhost:5672/",
  mongoDocs: "mongodb://user:password@host:27017",
  token: "<your-api-key>",
};

export async function callApi(path, token) {
  const res = await fetch(`https://api.internal.io${path}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  return res.json();
}
