"""Skip marker for the vector tests under a botocore whose DynamoDB model predates vector indexes
(`make test-ranges` runs the suite with botocore 1.43, which cannot send SearchVectors)."""
from __future__ import annotations

import botocore.session
import pytest

HAS_VECTORS = "SearchVectors" in botocore.session.get_session().get_service_model("dynamodb").operation_names
needs_vectors = pytest.mark.skipif(not HAS_VECTORS, reason="this botocore's DynamoDB model has no vector indexes")
