"""Sans-I/O core of RocketMQ's remoting protocol: frames, headers, message encodings.

Nothing here imports asyncio, anyio or socket, or reads a clock or global randomness.
"""
