"""The profile-merge rules as small torch functions, one file per rule, for many profiles or
edges at once; each has a numba twin of the same name in :mod:`torchmsa.cpu.rules` that gives
the same integers one profile or edge at a time.

* :mod:`.gap_costs`: a boundary's gap cost from the weight that crosses it, in halves;
* :mod:`.residue_factors`: how much of a column's weight is residues, for the gaps facing it;
* :mod:`.column_scores`: occupancy divisors and exact floored profile column scores;
* :mod:`.consistency_tile`: library sums joining the column scores, floored per cell;
* :mod:`.facing`: a gap cost scaled by the residue factor of the column it faces;
* :mod:`.path_score`: the score of a given path under the DP's global-mode rules;
* :mod:`.path_columns`: where a path takes each column of the profiles it aligns;
* :mod:`.boundary_weights`: a child's boundary weights in its parent;
* :mod:`.apply_path`: two groups of an alignment merged along a path.
"""
