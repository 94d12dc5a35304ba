"""Physical (acausal) networks: electrical, thermal and 1-D mechanical elements on one
acausal layer (``acausal``), MSL 4.1.0 stick-slip friction (``friction``), planar
mechanisms (``planar``); ``islands`` builds them from a diagram's blocks."""
