HELP="x"
def configure(p): pass
def run(a,c): return 0
