"""The public value types, one module each, below the remoting core that encodes them:
``Message`` and ``MessageQueue`` (``message``), ``SendResult`` (``send_result``) and
``TransactionState`` (``transaction_state``). They import only the error tree and the
response-code table (``SendStatus`` is a response code's verdict, so it lives in that
table). A consumed message (``ReceivedMessage``) decodes its properties on first read,
so it lives beside that decoding, in the consumer's core (``producer._consume.received``).
The facade (``producer``, ``producer.consumer``) re-exports them: import them from there.
"""
