"""Transactional messages: :class:`TransactionProducer` and the checks it answers."""
