"""Three-tier review evaluation over PeerRead."""
