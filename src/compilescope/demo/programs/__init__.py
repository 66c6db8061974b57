"""The demo's example programs: each module has a `main()` that `compilescope demo` runs under capture().

They are the programs behind the bundled traces (tests/data/torch213/programs; training
here compiles with Inductor), with every config change scoped to main() so they can run
one after another in one process.
Each also runs on its own: `compilescope run -m compilescope.demo.programs.graph_breaks`.
"""
