"""LLM access with hard spend control: prices, a budget ledger, a response cache, providers."""
