"""The app's model layer, Qt-free (an import-linter contract holds it): the open project's state and
the fine-grained events views subscribe to (napari's evented ``Dims`` ← ``QtDims``)."""
