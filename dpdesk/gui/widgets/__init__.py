"""The app's building blocks: plots, charts, item models, the glossary, progress bars — widgets that know
nothing of a project."""
