"""The ``modelica`` block's model: Modelica source compiled by rumoca, lowered and run by the
package itself (docs/guide/modelica.md).

The stages, one module each, in the order a model goes through them:

* ``frontend``: rumoca (the optional extra ``modelica``, imported only here and only when a
  modelica block is compiled) parses and flattens the model; the flat models are cached per
  process by a hash of the source, the model name and the library files;
* ``flat``: rumoca's flat model read into variables, equations, when-chains and initial
  equations, the expressions as trees of ``symbolic`` (functions inlined); what it does not
  read is refused with its source position;
* ``structure``: parameters folded in, aliases eliminated, relations made event functions,
  index reduction (Pantelides, dummy derivatives), the equations sorted into blocks;
* ``evaluate``: expression trees as closures over one list of floats (no text is run);
* ``runtime``: the blocks solved in order (explicitly, as linear systems, by Newton), and
  the model as a continuous part of the plan with Modelica's event iteration.
"""
