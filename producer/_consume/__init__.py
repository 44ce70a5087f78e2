"""The push consumer's pure core: allocation, process queues, offsets, consume results.

No I/O and no clock reads here: the shell in :mod:`producer.consumer` passes times in.
"""
