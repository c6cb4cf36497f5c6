//! Real git repositories with real unit tests that completion tasks are cut from (and
//! that `tasks run` scores): a Python one with pytest tests, a Go one with `go test`
//! tests, and the evolution fixture, whose later commit adds a helper an earlier task
//! could copy (HumanEvo's evolution-aware vs -ignored setting).
//!
//! Each builder returns the repository and its commits, oldest first. Commits have
//! fixed authors and dates (`derive_support::TestRepo`), so ids are stable and task
//! files can be snapshotted.

#![allow(dead_code)]

use crate::derive_support::TestRepo;

/// A built repository and its commits, oldest first.
pub struct BuiltRepo {
    /// The repository (its temporary directory lives as long as this).
    pub repo: TestRepo,
    /// Full commit ids, oldest first.
    pub commits: Vec<String>,
}

/// A Python shop with pytest tests, in three commits: prices (a function and its
/// test); a cart class, a VAT module and a total using both; a discount branch.
pub fn python_repo() -> BuiltRepo {
    let mut repo = TestRepo::new();
    let mut commits = Vec::new();
    repo.write(
        "shop.py",
        "\"\"\"Prices of a small shop.\"\"\"\n\n\ndef parse_price(text):\n    \"\"\"The price in cents of a text like '3.50'.\"\"\"\n    euros, _, cents = text.partition(\".\")\n    return int(euros) * 100 + int(cents or 0)\n",
    );
    repo.write(
        "tests/test_shop.py",
        "from shop import parse_price\n\n\ndef test_parse_price():\n    assert parse_price(\"3.50\") == 350\n    assert parse_price(\"2\") == 200\n",
    );
    commits.push(repo.commit("shop: parse prices"));
    repo.write(
        "rates.py",
        "\"\"\"Tax rates.\"\"\"\n\nVAT_PERCENT = 20\n\n\ndef with_vat(cents):\n    \"\"\"Cents with VAT added, rounded down.\"\"\"\n    return cents * (100 + VAT_PERCENT) // 100\n",
    );
    repo.write(
        "shop.py",
        "\"\"\"Prices of a small shop.\"\"\"\n\nfrom rates import with_vat\n\n\ndef parse_price(text):\n    \"\"\"The price in cents of a text like '3.50'.\"\"\"\n    euros, _, cents = text.partition(\".\")\n    return int(euros) * 100 + int(cents or 0)\n\n\nclass Cart:\n    \"\"\"Items and their prices in cents.\"\"\"\n\n    def __init__(self):\n        self.items = []\n\n    def add(self, text):\n        \"\"\"Adds an item by its price text.\"\"\"\n        self.items.append(parse_price(text))\n\n    def subtotal(self):\n        \"\"\"The sum of the items.\"\"\"\n        return sum(self.items)\n\n    def total(self):\n        \"\"\"The subtotal with VAT.\"\"\"\n        return with_vat(self.subtotal())\n",
    );
    repo.write(
        "tests/test_shop.py",
        "from shop import Cart, parse_price\n\n\ndef test_parse_price():\n    assert parse_price(\"3.50\") == 350\n    assert parse_price(\"2\") == 200\n\n\ndef test_cart():\n    cart = Cart()\n    cart.add(\"1.00\")\n    cart.add(\"2.00\")\n    assert cart.subtotal() == 300\n    assert cart.total() == 360\n",
    );
    commits.push(repo.commit("shop: a cart with VAT"));
    repo.write(
        "shop.py",
        "\"\"\"Prices of a small shop.\"\"\"\n\nfrom rates import with_vat\n\n\ndef parse_price(text):\n    \"\"\"The price in cents of a text like '3.50'.\"\"\"\n    euros, _, cents = text.partition(\".\")\n    return int(euros) * 100 + int(cents or 0)\n\n\nclass Cart:\n    \"\"\"Items and their prices in cents.\"\"\"\n\n    def __init__(self):\n        self.items = []\n\n    def add(self, text):\n        \"\"\"Adds an item by its price text.\"\"\"\n        self.items.append(parse_price(text))\n\n    def subtotal(self):\n        \"\"\"The sum of the items, 10 % off from 10.00 on.\"\"\"\n        total = sum(self.items)\n        if total >= 1000:\n            total -= total // 10\n        return total\n\n    def total(self):\n        \"\"\"The subtotal with VAT.\"\"\"\n        return with_vat(self.subtotal())\n",
    );
    repo.write(
        "tests/test_shop.py",
        "from shop import Cart, parse_price\n\n\ndef test_parse_price():\n    assert parse_price(\"3.50\") == 350\n    assert parse_price(\"2\") == 200\n\n\ndef test_cart():\n    cart = Cart()\n    cart.add(\"1.00\")\n    cart.add(\"2.00\")\n    assert cart.subtotal() == 300\n    assert cart.total() == 360\n\n\ndef test_discount():\n    cart = Cart()\n    cart.add(\"20.00\")\n    assert cart.subtotal() == 1800\n",
    );
    commits.push(repo.commit("shop: 10 % off large carts"));
    BuiltRepo { repo, commits }
}

/// A Go calculator module with `go test` tests, in two commits: `Add` and its test;
/// a stack type with methods, a `Sum` using `Add` from another file, and their tests.
pub fn go_repo() -> BuiltRepo {
    let mut repo = TestRepo::new();
    let mut commits = Vec::new();
    repo.write("go.mod", "module example.com/calc\n\ngo 1.19\n");
    repo.write(
        "add.go",
        "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
    );
    repo.write(
        "add_test.go",
        "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2 + 3\")\n\t}\n}\n",
    );
    commits.push(repo.commit("calc: add"));
    repo.write(
        "stack.go",
        "package calc\n\n// Stack is a stack of ints.\ntype Stack struct {\n\titems []int\n}\n\n// Push puts v on top.\nfunc (s *Stack) Push(v int) {\n\ts.items = append(s.items, v)\n}\n\n// Pop takes the top off; false when empty.\nfunc (s *Stack) Pop() (int, bool) {\n\tif len(s.items) == 0 {\n\t\treturn 0, false\n\t}\n\tv := s.items[len(s.items)-1]\n\ts.items = s.items[:len(s.items)-1]\n\treturn v, true\n}\n\n// Sum adds up every item.\nfunc Sum(values []int) int {\n\ttotal := 0\n\tfor _, v := range values {\n\t\ttotal = Add(total, v)\n\t}\n\treturn total\n}\n",
    );
    repo.write(
        "stack_test.go",
        "package calc\n\nimport \"testing\"\n\nfunc TestStack(t *testing.T) {\n\tvar s Stack\n\ts.Push(1)\n\ts.Push(2)\n\tif v, ok := s.Pop(); !ok || v != 2 {\n\t\tt.Fatal(\"pop\")\n\t}\n}\n\nfunc TestSum(t *testing.T) {\n\tif Sum([]int{1, 2, 3}) != 6 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n",
    );
    commits.push(repo.commit("calc: a stack and a sum"));
    BuiltRepo { repo, commits }
}

/// The evolution fixture: commit 1 adds `average_price` (the mean of a price list);
/// commit 2 (later) adds `stats.py` with `mean_price`, the same logic under another
/// name, which a task cut from commit 1 could copy. That task may only see commit 1's
/// code: BM25 context from HEAD retrieves `mean_price` first (above `count_prices`,
/// kept short so that its text in the query does not outrank the helper) and is
/// flagged as a leak; context from the state has `count_prices` first.
pub fn evolution_repo() -> BuiltRepo {
    let mut repo = TestRepo::new();
    let mut commits = Vec::new();
    repo.write(
        "prices.py",
        "\"\"\"Price lists.\"\"\"\n\n\ndef count_prices(prices):\n    return len(prices)\n\n\ndef average_price(prices):\n    \"\"\"The mean of the prices, 0 for none.\"\"\"\n    if not prices:\n        return 0\n    total = 0\n    for price in prices:\n        total += price\n    return total / count_prices(prices)\n",
    );
    repo.write(
        "tests/test_prices.py",
        "from prices import average_price\n\n\ndef test_average_price():\n    assert average_price([1, 2, 3]) == 2\n    assert average_price([]) == 0\n",
    );
    commits.push(repo.commit("prices: average"));
    repo.write(
        "stats.py",
        "\"\"\"Statistics of price lists.\"\"\"\n\n\ndef mean_price(prices):\n    \"\"\"The mean of the prices, 0 for none.\"\"\"\n    if not prices:\n        return 0\n    total = 0\n    for price in prices:\n        total += price\n    return total / len(prices)\n",
    );
    commits.push(repo.commit("stats: mean_price"));
    BuiltRepo { repo, commits }
}
