"""What a model's tokens cost, in dollars: litellm's own price table (which works offline with
LITELLM_LOCAL_MODEL_COST_MAP=True), or a price the user gives (``--price IN,OUT``, dollars per million prompt
and completion tokens). The embedded model runs in this process and costs nothing; a model litellm has no price
for has none (None), and every figure in dollars then says so rather than guess."""

from __future__ import annotations

from critique.base.price import PER_MILLION, Price, parse_price

EMBEDDED = "local/"  # critique.llm.local.PROVIDER's models: in process


def price_of(model: str, given: str | None = None) -> Price | None:
    """The price of ``model``'s tokens: ``given`` (IN,OUT), else the embedded model's (0), else litellm's price
    table's; None when none is known."""
    if given is not None:
        return Price(*parse_price(given), "--price")
    if model.startswith(EMBEDDED):
        return Price(0.0, 0.0, "embedded")
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises its own errors for a model its table lacks
        return None
    prompt, completion = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if prompt is None or completion is None:
        return None
    return Price(prompt * PER_MILLION, completion * PER_MILLION, "litellm")


def unknown(model: str) -> str:
    """What to say of a model without a known price."""
    return f"no known price for {model} (litellm's price table lacks it): give --price IN,OUT, dollars per million " \
           "prompt and completion tokens"
