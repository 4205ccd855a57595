"""The claims engine: what a request asks, what a command computes, what the
evidence shows, and the rules R4a and R4b judge a claim by."""
