"""R2's plan as it will run: the repairs made to a planner's reply, its prompts and
replies, and the calibration from memory."""
