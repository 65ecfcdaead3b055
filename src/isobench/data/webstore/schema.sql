-- The webstore schema, after DVD Store 2's PostgreSQL one (ds2_create_tbl.sql),
-- trimmed to what the operations use. psql variables: :datadir (the COPY files).
\set ON_ERROR_STOP 1
CREATE TABLE categories (category integer PRIMARY KEY, categoryname text NOT NULL);
CREATE TABLE customers (customerid integer PRIMARY KEY, firstname text NOT NULL, lastname text NOT NULL,
    username text NOT NULL, password text NOT NULL, email text, country text, age smallint,
    income integer, gender char(1));
CREATE TABLE products (prod_id integer PRIMARY KEY, category integer NOT NULL REFERENCES categories,
    title text NOT NULL, actor text NOT NULL, price numeric(12,2) NOT NULL, special smallint NOT NULL);
CREATE TABLE inventory (prod_id integer PRIMARY KEY REFERENCES products, quan_in_stock integer NOT NULL,
    sales integer NOT NULL);
CREATE TABLE orders (orderid serial PRIMARY KEY, orderdate timestamptz NOT NULL DEFAULT now(),
    customerid integer NOT NULL REFERENCES customers, netamount numeric(12,2) NOT NULL,
    tax numeric(12,2) NOT NULL, totalamount numeric(12,2) NOT NULL);
CREATE TABLE orderlines (orderid integer NOT NULL REFERENCES orders, orderlineid smallint NOT NULL,
    prod_id integer NOT NULL, quantity smallint NOT NULL, PRIMARY KEY (orderid, orderlineid));
\set f :datadir '/categories.tsv'
COPY categories FROM :'f';
\set f :datadir '/customers.tsv'
COPY customers FROM :'f';
\set f :datadir '/products.tsv'
COPY products FROM :'f';
\set f :datadir '/inventory.tsv'
COPY inventory FROM :'f';
CREATE SEQUENCE customers_seq;
SELECT setval('customers_seq', (SELECT max(customerid) FROM customers));
CREATE UNIQUE INDEX ix_cust_username ON customers (username);
CREATE INDEX ix_prod_category ON products (category);
CREATE INDEX ix_prod_title ON products (lower(title) text_pattern_ops);
CREATE INDEX ix_prod_actor ON products (lower(actor) text_pattern_ops);
CREATE INDEX ix_order_customerid ON orders (customerid);
ANALYZE;
SELECT 'loaded', (SELECT count(*) FROM customers), (SELECT count(*) FROM products);
