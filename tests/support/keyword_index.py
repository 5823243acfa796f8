"""The keyword index (postings and term statistics, per tenant and per scope) as the
triggers keep it, and as it would be computed from scratch."""


async def stored_index(sql):
    """The postings and statistics as the triggers keep them."""
    postings = await sql(
        "SELECT tenant_id, memory_type, scope, term, memory_id, tf, doc_len "
        "FROM keyword_postings ORDER BY memory_id, term"
    )
    terms = await sql(
        "SELECT tenant_id, term, doc_freq FROM keyword_terms ORDER BY tenant_id, term"
    )
    corpus = await sql(
        "SELECT tenant_id, doc_count, total_len FROM keyword_corpus "
        "WHERE doc_count > 0 ORDER BY tenant_id"
    )
    scope_terms = await sql(
        "SELECT tenant_id, scope, term, doc_freq FROM keyword_scope_terms "
        "ORDER BY tenant_id, scope, term"
    )
    scope_corpus = await sql(
        "SELECT tenant_id, scope, doc_count, total_len "
        "FROM keyword_scope_corpus ORDER BY tenant_id, scope"
    )
    return postings, terms, corpus, scope_terms, scope_corpus


async def recomputed_index(sql):
    """The same, computed from scratch from every row's search_vector."""
    documents = """
        SELECT tenant_id, 'episode' AS memory_type, butler AS scope, id, search_vector
        FROM episodes
        UNION ALL SELECT tenant_id, 'fact', scope, id, search_vector FROM facts
        UNION ALL SELECT tenant_id, 'rule', scope, id, search_vector FROM rules
    """
    postings = await sql(f"""
        SELECT d.tenant_id, d.memory_type, d.scope, lex.lexeme AS term, d.id AS memory_id,
               coalesce(array_length(lex.positions, 1), 1) AS tf,
               engram_tsvector_length(d.search_vector) AS doc_len
        FROM ({documents}) d, unnest(d.search_vector) lex ORDER BY d.id, lex.lexeme""")
    terms = await sql(f"""
        SELECT d.tenant_id, lex.lexeme AS term, count(*) AS doc_freq
        FROM ({documents}) d, unnest(d.search_vector) lex
        GROUP BY 1, 2 ORDER BY 1, 2""")
    corpus = await sql(f"""
        SELECT tenant_id, count(*) AS doc_count,
               sum(engram_tsvector_length(search_vector)) AS total_len
        FROM ({documents}) d WHERE length(search_vector) > 0 GROUP BY 1 ORDER BY 1""")
    scope_terms = await sql(f"""
        SELECT d.tenant_id, d.scope, lex.lexeme AS term, count(*) AS doc_freq
        FROM ({documents}) d, unnest(d.search_vector) lex
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    scope_corpus = await sql(f"""
        SELECT tenant_id, scope, count(*) AS doc_count,
               sum(engram_tsvector_length(search_vector)) AS total_len
        FROM ({documents}) d WHERE length(search_vector) > 0 GROUP BY 1, 2 ORDER BY 1, 2""")
    return postings, terms, corpus, scope_terms, scope_corpus
