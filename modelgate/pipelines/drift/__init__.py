"""The drift-monitoring pipeline: its step graph (:mod:`.runner`), its steps and the monitor set-up."""
