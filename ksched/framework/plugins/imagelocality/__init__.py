"""ImageLocality: prefers nodes that already hold the pod's container images.

Upstream: ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go``.
"""

from ksched.framework.plugins.imagelocality.plugin import NAME, ImageLocality, new, normalized_image_name

__all__ = ["NAME", "ImageLocality", "new", "normalized_image_name"]
