"""heatline inside other tools: the IPython/Jupyter magics (ipython.py) and the pytest plugin
(pytest_plugin.py). Thin: each parses its own syntax and calls the API. Importing this package
imports nothing (pytest loads the plugin in every run wherever heatline is installed)."""
