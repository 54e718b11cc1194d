"""What calls cost: the price table, token counts, the dry-run plan and the shared budget ledger."""
