"""A stream: memory that keeps learning (docs/memory.md sections 1 and 2): its options and name (``spec``), the
online loop (``loop``), its advice (``advice``), and its checks by verification and disabling (``checks``)."""
