"""Release mechanisms as objects that know their own privacy map (after OpenDP's measurements).

:mod:`~dpdesk.engine.mechanisms.base` states the protocol every release kind follows,
:mod:`~dpdesk.engine.mechanisms.charge` the per-cell charge a release makes (paper Thm 5.4),
:mod:`~dpdesk.engine.mechanisms.laplace` the noise of a fresh count, :mod:`~dpdesk.engine.mechanisms.postprocessing`
the free releases, and :mod:`~dpdesk.engine.mechanisms.registry` the one table of mechanisms, noise
families and posterior methods. :mod:`~dpdesk.engine.mechanisms.secure_noise` is the vetted sampler.
"""
