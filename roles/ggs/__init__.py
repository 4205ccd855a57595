"""The Goal Gradient Solver: the loss, the decision and its blocks, the state
carried between rounds, and the control strategies it is measured against."""
