from . import run_demo

run_demo()
