<?php
// The webstore's one PHP page (DVD Store 2's ds2 PHP pages in one):
// ?op=login|newcust|browse|product|purchase|history, a JSON answer.
// Connections persist per php-fpm worker, as DS2's PHP driver's pconnect.
header('Content-Type: application/json');
$db = new PDO('pgsql:host=' . getenv('WS_PGHOST') . ';dbname=postgres', 'postgres', null,
              [PDO::ATTR_PERSISTENT => true, PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$op = $_GET['op'] ?? '';
function rows($db, $sql, $args) { $s = $db->prepare($sql); $s->execute($args); return $s->fetchAll(PDO::FETCH_ASSOC); }
try {
  switch ($op) {
  case 'login':
    $r = rows($db, 'SELECT customerid FROM customers WHERE username = ? AND password = ?',
              [$_GET['user'], 'password']);
    if (!$r) { http_response_code(404); echo '{"error":"no such customer"}'; break; }
    $cid = $r[0]['customerid'];
    // DS2's login also shows the customer's last titles bought
    $h = rows($db, 'SELECT p.title FROM orders o JOIN orderlines l ON l.orderid = o.orderid
                    JOIN products p ON p.prod_id = l.prod_id WHERE o.customerid = ?
                    ORDER BY o.orderid DESC LIMIT 10', [$cid]);
    echo json_encode(['customerid' => $cid, 'recent' => count($h)]);
    break;
  case 'newcust':
    $id = rows($db, "SELECT nextval('customers_seq') AS id", [])[0]['id'];
    rows($db, "INSERT INTO customers VALUES (?, 'New', 'Customer', ?, 'password', NULL, 'US', 30, 50000, 'F')",
         [$id, 'new' . $id]);
    echo json_encode(['customerid' => $id]);
    break;
  case 'browse':
    $by = $_GET['by'] ?? 'category';
    if ($by === 'category') {
      $r = rows($db, 'SELECT prod_id, title, actor, price FROM products WHERE category = ? AND special = 1 LIMIT 10',
                [(int)$_GET['q']]);
    } elseif ($by === 'title' || $by === 'actor') {
      $r = rows($db, "SELECT prod_id, title, actor, price FROM products WHERE lower($by) LIKE ? LIMIT 10",
                [strtolower($_GET['q']) . '%']);
    } else { http_response_code(400); echo '{"error":"bad browse"}'; break; }
    echo json_encode(['n' => count($r), 'items' => $r]);
    break;
  case 'product':
    $r = rows($db, 'SELECT p.prod_id, p.title, p.actor, p.price, c.categoryname, i.quan_in_stock
                    FROM products p JOIN categories c ON c.category = p.category
                    JOIN inventory i ON i.prod_id = p.prod_id WHERE p.prod_id = ?', [(int)$_GET['id']]);
    if (!$r) { http_response_code(404); echo '{"error":"no such product"}'; break; }
    echo json_encode($r[0]);
    break;
  case 'purchase':
    // items=prod:qty,prod:qty,...; all lines in one transaction, rolled back
    // when one product's stock runs out (DS2's purchase)
    // lines merged per product and locked in product order, so that two
    // purchases cannot deadlock on each other's inventory rows
    $qty = [];
    foreach (explode(',', $_GET['items'] ?? '') as $it) {
      [$p, $q] = array_map('intval', explode(':', $it) + [1 => 1]);
      if ($p > 0 && $q > 0) $qty[$p] = ($qty[$p] ?? 0) + $q;
    }
    ksort($qty);
    $lines = [];
    foreach ($qty as $p => $q) $lines[] = [$p, $q];
    if (!$lines) { http_response_code(400); echo '{"error":"no items"}'; break; }
    $db->beginTransaction();
    $net = 0.0; $upd = $db->prepare('UPDATE inventory SET quan_in_stock = quan_in_stock - ?, sales = sales + ?
                                     WHERE prod_id = ? AND quan_in_stock >= ?');
    $price = $db->prepare('SELECT price FROM products WHERE prod_id = ?');
    foreach ($lines as [$p, $q]) {
      $upd->execute([$q, $q, $p, $q]);
      if ($upd->rowCount() !== 1) { $db->rollBack(); echo '{"rollback":1}'; break 2; }
      $price->execute([$p]); $net += $q * (float)$price->fetchColumn();
    }
    $tax = round($net * 0.0825, 2);
    $oid = rows($db, 'INSERT INTO orders (customerid, netamount, tax, totalamount) VALUES (?, ?, ?, ?) RETURNING orderid',
                [(int)$_GET['cust'], $net, $tax, $net + $tax])[0]['orderid'];
    $ins = $db->prepare('INSERT INTO orderlines VALUES (?, ?, ?, ?)');
    foreach ($lines as $n => [$p, $q]) $ins->execute([$oid, $n + 1, $p, $q]);
    $db->commit();
    echo json_encode(['orderid' => $oid, 'total' => $net + $tax]);
    break;
  case 'history':
    $r = rows($db, 'SELECT o.orderid, o.totalamount, count(l.*) AS lines FROM orders o
                    JOIN orderlines l ON l.orderid = o.orderid WHERE o.customerid = ?
                    GROUP BY o.orderid ORDER BY o.orderid DESC LIMIT 10', [(int)$_GET['cust']]);
    echo json_encode(['n' => count($r)]);
    break;
  default:
    http_response_code(400); echo '{"error":"unknown op"}';
  }
} catch (PDOException $e) {
  if ($db->inTransaction()) $db->rollBack();
  http_response_code(500); echo json_encode(['error' => $e->getMessage()]);
}
