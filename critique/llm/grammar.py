"""Greedy decoding under a JSON grammar for the embedded model, checking the best token first.

llama-cpp-python's sampler chain applies the grammar to every token of the vocabulary at
every step (49,152 for SmolLM2: about 12 ms a token on 2 cores, more than decoding the token
costs). llama.cpp's own command-line sampler avoids that: it takes the model's favourite token,
asks the grammar about that one token, and runs the full pass only when the grammar refuses
it. `GrammarFirstLlama` does the same for greedy decoding (temperature 0, no penalties, no
logit processors); the token chosen is the one the full pass would choose, since the best
token the grammar allows is the best token when the grammar allows it. Any other decoding
takes llama-cpp-python's own chain.
"""

from __future__ import annotations

import ctypes

import llama_cpp
import numpy as np
from llama_cpp import Llama


class GreedyUnderGrammar:
    """The object `Llama.generate` samples with: `sample(ctx, idx)` returns the token and
    advances the grammar past it."""

    def __init__(self, llm: Llama, grammar) -> None:
        self.n_vocab = llm.n_vocab()
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self.grammar:
            raise ValueError("llama.cpp could not parse the grammar")
        self.one = (llama_cpp.llama_token_data * 1)()
        self.every = (llama_cpp.llama_token_data * self.n_vocab)()
        self.view = np.ctypeslib.as_array(self.every)  # fields id, logit, p; only the logits change
        self.view["id"] = np.arange(self.n_vocab, dtype=np.int32)
        self.full_passes = 0

    def _apply(self, data, size: int) -> None:
        array = llama_cpp.llama_token_data_array(data=data, size=size, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(array))

    def sample(self, ctx, idx: int) -> int:
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,))
        token = int(np.argmax(logits))
        self.one[0].id, self.one[0].logit, self.one[0].p = token, float(logits[token]), 0.0
        self._apply(self.one, 1)
        if not np.isfinite(self.one[0].logit):  # the grammar refuses the favourite: ask about all
            self.full_passes += 1
            self.view["logit"] = logits
            self._apply(self.every, self.n_vocab)
            token = int(np.argmax(self.view["logit"]))
        llama_cpp.llama_sampler_accept(self.grammar, token)
        return token

    def close(self) -> None:
        if self.grammar:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None

    def __del__(self) -> None:
        self.close()


class GrammarFirstLlama(Llama):
    """A `Llama` whose greedy decoding under a grammar checks the best token first."""

    def _init_sampler(self, *args, **kwargs):
        greedy = (kwargs.get("temp") == 0.0 and kwargs.get("grammar") is not None
                  and not kwargs.get("logits_processor") and kwargs.get("repeat_penalty", 1.0) == 1.0
                  and not kwargs.get("frequency_penalty") and not kwargs.get("presence_penalty")
                  and not kwargs.get("mirostat_mode"))
        if not greedy:
            return super()._init_sampler(*args, **kwargs)
        return GreedyUnderGrammar(self, kwargs["grammar"])
