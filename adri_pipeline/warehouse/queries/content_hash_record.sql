INSERT OR REPLACE INTO asset_content_hashes VALUES ($asset, $content_hash)
