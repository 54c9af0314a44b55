SELECT content_hash FROM asset_content_hashes WHERE asset = $asset
