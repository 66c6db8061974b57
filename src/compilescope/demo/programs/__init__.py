"""The demo's example programs: `compilescope demo` runs each as a script, in a process of its own, traced.

The bundled traces (../traces/) are recordings of these very files (scripts/make_demo_traces.py).
Each also runs on its own: `compilescope run --fresh-cache -m compilescope.demo.programs.graph_breaks`.
"""
