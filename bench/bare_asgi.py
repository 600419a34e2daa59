"""The stack's ceiling: an ASGI app that answers every request with a fixed DynamoDB-shaped response."""
from __future__ import annotations

BODY = b"{}"
HEADERS = [(b"content-type", b"application/x-amz-json-1.0"), (b"content-length", b"2"),
           (b"x-amzn-requestid", b"BARE" * 13), (b"x-amz-crc32", b"2745614147")]


async def app(scope, receive, send) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


if __name__ == "__main__":
    import sys

    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False,
                loop="uvloop", http="httptools", lifespan="off")
