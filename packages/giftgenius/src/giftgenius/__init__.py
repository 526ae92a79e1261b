"""GiftGenius: gift suggestions and card-message prompts built on a packaged gift catalog."""
