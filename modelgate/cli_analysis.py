def add_commands(sub):
    """Analysis commands (evaluate, explain, fairness, drift) are added here."""
