"""The evaluation pipeline: its step graph (:mod:`.runner`), its steps and what they store."""
