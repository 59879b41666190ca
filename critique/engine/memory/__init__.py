"""Episodic memory (critiques retrieved per question), the critique stage that writes it (critic),
which retrieved entries enter a prompt (selection: gate, budget, contrast pairs), and semantic
memory (distilled advice)."""
