def run_demo(**kw): return 0
