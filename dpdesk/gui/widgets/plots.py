"""pyqtgraph, configured once for dpdesk's plots.

Plot modules import ``pg`` from here so the global options are set before the first plot exists,
without the start-up path importing pyqtgraph at all.
"""

import pyqtgraph as pg

pg.setConfigOptions(antialias=True)

__all__ = ["pg"]
