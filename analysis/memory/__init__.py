"""The memory experiments' tables (docs/memory.md): the audit of each memory entry, a field method's notes and a
stream's notes (``audit``, ``audit_methods``, ``audit_notes``, rendered by ``audit_render``), the Echo Gap
(``echo``, its statistics in ``echo_stats``), the online tables of a stream and its write-back loop (``online``,
``online_loop``), the overturn probe (``overturn``), past outcomes against procedures (``conditioning``),
revocable priors (``priors``), the dose-response curve (``dose``), admission at write time (``admission``),
de-inflation (``deinflate``), credit by deletion (``credit``) and its estimate learned from the logs
(``credit_model``), and the retrieval gate (``gate``)."""
