"""The field's methods beside ours (ACE, Dynamic Cheatsheet, ExpeL, DSPy; critique.engine.field): the ``methods``
table of their accuracy, their memory and what their offline stage spent (``methods``), and what a method's memory
holds, read from its logs (``method_memory``)."""
