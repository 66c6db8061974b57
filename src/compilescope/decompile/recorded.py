"""Names of the artifacts compilescope's bytecode hook writes into a TORCH_TRACE log (bytecode_capture.py).

Stdlib only, no imports: the hook in a child process loads this file by path.
"""

ORIGINAL = "compilescope_original_bytecode"  # `dis` of the code Dynamo compiled
TRANSFORMED_BYTECODE = "compilescope_transformed_bytecode"  # `dis` of the code it runs instead
TRANSFORMED = "compilescope_transformed_code"  # that code decompiled (or the annotated disassembly)
ARTIFACTS = (ORIGINAL, TRANSFORMED_BYTECODE, TRANSFORMED)
HEADER = "# compilescope: the code torch.compile runs instead of "  # + co_name + " (what it is)"
