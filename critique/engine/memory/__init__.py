"""Episodic memory (critiques retrieved per question), the critique stage that writes it (critic),
and semantic memory (distilled advice)."""
