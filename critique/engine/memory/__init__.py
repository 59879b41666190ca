"""Episodic memory (critiques retrieved per question) and semantic memory (distilled advice)."""
