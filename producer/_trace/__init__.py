"""Message trace (``trace=`` on producers and consumers): records as the Java client
writes them, sent in batches through an inner producer, off every send's path."""
